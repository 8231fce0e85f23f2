// SPDX-License-Identifier: Apache-2.0

package kubelet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/client-go/kubernetes"
	drapbv1 "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// pollInterval is how often Discover rescans the registry directory.
const pollInterval = 100 * time.Millisecond

// callTimeout bounds each registration call, so a socket whose server is
// gone cannot stall discovery.
const callTimeout = 5 * time.Second

// Kubelet is a fake kubelet for one node. It is safe for concurrent use.
type Kubelet struct {
	client      kubernetes.Interface
	registryDir string

	mu      sync.Mutex
	plugins []*Plugin
}

// New returns a fake kubelet that discovers plugins in registryDir (the
// real kubelet's is /var/lib/kubelet/plugins_registry). client is the
// API client the node would use; the gRPC calls do not need it, but tests
// can reach it through [Kubelet.Client].
func New(client kubernetes.Interface, registryDir string) *Kubelet {
	return &Kubelet{client: client, registryDir: registryDir}
}

// Client returns the client New was given.
func (k *Kubelet) Client() kubernetes.Interface { return k.client }

// RegistryDir returns the registration directory New was given.
func (k *Kubelet) RegistryDir() string { return k.registryDir }

// Discover waits until a DRA plugin for driverName registers in the
// registry directory, and connects to it.
//
// Every *.sock in the directory is asked for its PluginInfo, newest file
// first, so that during a rolling update the instance that started last
// wins, as it does in the kubelet, which prefers the most recent
// registration. Sockets that do not answer (left behind by a dead driver)
// and sockets of other plugins are skipped. The first match must be of
// type "DRAPlugin" and list the DRA v1 service ("v1.DRAPlugin") among its
// supported versions; if it does not, Discover tells the plugin that
// registration failed and returns an error. Otherwise it reports
// registration success to the plugin and dials the endpoint the plugin
// named (the registration socket itself when the endpoint is empty).
//
// Discover keeps polling every 100ms until ctx ends; the error then says
// what it last saw.
func (k *Kubelet) Discover(ctx context.Context, driverName string) (*Plugin, error) {
	lastSeen := "no sockets"
	for {
		socks, err := socketsNewestFirst(k.registryDir)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("kubelet: scan %s: %w", k.registryDir, err)
		}
		var seen []string
		for _, sock := range socks {
			info, err := getInfo(ctx, sock)
			if err != nil {
				seen = append(seen, fmt.Sprintf("%s: %v", filepath.Base(sock), err))
				continue
			}
			seen = append(seen, fmt.Sprintf("%s: %s %q", filepath.Base(sock), info.Type, info.Name))
			if info.Type != registerapi.DRAPlugin || info.Name != driverName {
				continue
			}
			p, err := k.register(ctx, sock, info)
			if err != nil {
				return nil, err
			}
			return p, nil
		}
		if len(seen) > 0 {
			lastSeen = strings.Join(seen, "; ")
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("kubelet: no DRA plugin %q registered in %s: %w (last seen: %s)", driverName, k.registryDir, ctx.Err(), lastSeen)
		case <-time.After(pollInterval):
		}
	}
}

// register validates info, tells the plugin the outcome and connects to
// its DRA service.
func (k *Kubelet) register(ctx context.Context, sock string, info *registerapi.PluginInfo) (*Plugin, error) {
	endpoint := info.Endpoint
	if endpoint == "" {
		endpoint = sock
	}
	var problem error
	if !slices.Contains(info.SupportedVersions, drapbv1.DRAPluginService) {
		problem = fmt.Errorf("plugin %q at %s supports %v, not %s", info.Name, sock, info.SupportedVersions, drapbv1.DRAPluginService)
	}
	var conn *grpc.ClientConn
	if problem == nil {
		var err error
		if conn, err = dial(endpoint); err != nil {
			problem = fmt.Errorf("plugin %q: dial %s: %w", info.Name, endpoint, err)
		}
	}
	status := &registerapi.RegistrationStatus{PluginRegistered: problem == nil}
	if problem != nil {
		status.Error = problem.Error()
	}
	if err := notify(ctx, sock, status); err != nil && problem == nil {
		problem = fmt.Errorf("plugin %q: NotifyRegistrationStatus: %w", info.Name, err)
	}
	if problem != nil {
		if conn != nil {
			conn.Close()
		}
		return nil, fmt.Errorf("kubelet: %w", problem)
	}
	p := &Plugin{
		name:               info.Name,
		endpoint:           endpoint,
		registrationSocket: sock,
		versions:           slices.Clone(info.SupportedVersions),
		conn:               conn,
		client:             drapbv1.NewDRAPluginClient(conn),
	}
	k.mu.Lock()
	k.plugins = append(k.plugins, p)
	k.mu.Unlock()
	return p, nil
}

// Close closes the connections of every plugin Discover returned.
func (k *Kubelet) Close() error {
	k.mu.Lock()
	plugins := k.plugins
	k.plugins = nil
	k.mu.Unlock()
	var errs []error
	for _, p := range plugins {
		errs = append(errs, p.Close())
	}
	return errors.Join(errs...)
}

// socketsNewestFirst lists dir's *.sock files by modification time, newest
// first. Hidden files are skipped, as the kubelet's plugin watcher does.
func socketsNewestFirst(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	type sock struct {
		path string
		mod  time.Time
	}
	var socks []sock
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".sock") || e.Type()&os.ModeSocket == 0 {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue // removed since ReadDir
		}
		socks = append(socks, sock{filepath.Join(dir, name), fi.ModTime()})
	}
	slices.SortStableFunc(socks, func(a, b sock) int { return b.mod.Compare(a.mod) })
	paths := make([]string, len(socks))
	for i, s := range socks {
		paths[i] = s.path
	}
	return paths, nil
}

// dial makes a lazy gRPC client connection to a unix socket.
func dial(path string) (*grpc.ClientConn, error) {
	return grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
}

func getInfo(ctx context.Context, sock string) (*registerapi.PluginInfo, error) {
	conn, err := dial(sock)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return registerapi.NewRegistrationClient(conn).GetInfo(ctx, &registerapi.InfoRequest{})
}

func notify(ctx context.Context, sock string, status *registerapi.RegistrationStatus) error {
	conn, err := dial(sock)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err = registerapi.NewRegistrationClient(conn).NotifyRegistrationStatus(ctx, status)
	return err
}
