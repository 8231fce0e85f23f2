// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"time"
)

// pollInterval is how often health endpoints and API objects are polled.
const pollInterval = 100 * time.Millisecond

// waitHealthy polls url with client until it answers 200, the process
// exits, timeout passes or ctx ends. Failures carry the log tail.
func waitHealthy(ctx context.Context, p *process, client *http.Client, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	var lastErr error
	for {
		err := probe(ctx, client, url)
		if err == nil {
			return nil
		}
		lastErr = err
		select {
		case <-p.Done():
			return p.componentError(fmt.Errorf("%w: %v", errExited, p.Err()))
		case <-ctx.Done():
			return p.componentError(fmt.Errorf("%s not healthy: %v (%w)", url, lastErr, ctx.Err()))
		case <-tick.C:
		}
	}
}

func probe(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, body)
	}
	return nil
}

// insecureClient is for the scheduler's and controller manager's /healthz:
// they serve with self-signed certificates they generate in memory, and
// /healthz is on their always-allowed list, so there is nothing to verify
// and no credential to send.
func insecureClient() *http.Client {
	return &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
	}
}
