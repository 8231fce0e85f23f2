// SPDX-License-Identifier: Apache-2.0

package relayd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/liken-sh/operators/internal/evdev"
)

// Client talks to a relay daemon over its unix socket.
type Client struct {
	socket string
	http   *http.Client
}

// ClientTimeout bounds each call, the answer's body included. The
// operator calls the relay from prepare and from the refresh of prepared
// claims' specs, both with the DRA driver's state locked: a relay that
// accepts a connection and never answers must fail the call, not hold
// every other claim's prepare behind it.
const ClientTimeout = 10 * time.Second

// NewClient returns a client of the daemon serving on the unix socket at
// socket. Nothing is dialled until a call; each call is bounded by
// ClientTimeout and by its context.
func NewClient(socket string) *Client {
	dialer := &net.Dialer{}
	return &Client{socket: socket, http: &http.Client{Timeout: ClientTimeout, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, "unix", socket)
		},
	}}}
}

// Attach asks for claim uid's devices on the controller at address; see
// Daemon.Attach. An error carries the daemon's text.
func (c *Client) Attach(ctx context.Context, uid, address string) (ClaimStatus, error) {
	body, _ := json.Marshal(attachRequest{Address: address})
	var st ClaimStatus
	err := c.do(ctx, http.MethodPut, ClaimsPath+url.PathEscape(uid), body, &st)
	return st, err
}

// Release lets claim uid's devices go; see Daemon.Release.
func (c *Client) Release(ctx context.Context, uid string) error {
	return c.do(ctx, http.MethodDelete, ClaimsPath+url.PathEscape(uid), nil, nil)
}

// Status returns every claim's devices by claim UID.
func (c *Client) Status(ctx context.Context) (map[string]ClaimStatus, error) {
	var st map[string]ClaimStatus
	err := c.do(ctx, http.MethodGet, ClaimsPath, nil, &st)
	return st, err
}

// Snapshots returns what the relay knows each controller to be, by
// address; see Daemon.Snapshots.
func (c *Client) Snapshots(ctx context.Context) (map[string][]evdev.Capabilities, error) {
	var out map[string][]evdev.Capabilities
	err := c.do(ctx, http.MethodGet, SnapshotsPath, nil, &out)
	return out, err
}

// Seed gives the relay a controller's snapshot kept with its bond; see
// Daemon.Seed.
func (c *Client) Seed(ctx context.Context, address string, snaps []evdev.Capabilities) error {
	body, err := json.Marshal(snaps)
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodPut, SnapshotsPath+url.PathEscape(address), body, nil)
}

func (c *Client) do(ctx context.Context, method, path string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, "http://relay"+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("input relay at %s: %w", c.socket, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("input relay at %s: %w", c.socket, err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("input relay: %s", strings.TrimSpace(string(data)))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("input relay at %s: answer: %w", c.socket, err)
	}
	return nil
}
