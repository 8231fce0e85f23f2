package audio

import "github.com/liken-sh/operators/internal/pipewire"

// remoteSetVolume is the Remote's volume writer (pending in pipewire).
func remoteSetVolume(pipewire.Remote) SetVolumeFunc { return nil }
