package valkey

import (
	"context"
	"fmt"
	"time"

	vk "github.com/valkey-io/valkey-go"
)

// CaughtUp waits, for at most d, until the replica at replicaIP has applied everything the
// primary at primaryIP had when asked (its master_repl_offset then). A replica that looks
// linked may still be behind: after a diskless full sync the primary holds the stream back
// until the replica's first acknowledgement, up to a second later (a backup read from it then
// was empty while a thousand writes were acknowledged: found by the CI run).
func (p *Pool) CaughtUp(ctx context.Context, primaryIP, replicaIP string, d time.Duration) error {
	offset := func(ip string) (int64, error) {
		var off int64
		err := p.run(ctx, Addr(ip), func(ctx context.Context, c vk.Client) error {
			text, err := c.Do(ctx, c.B().Info().Section("replication").Build()).ToString()
			if err != nil {
				return err
			}
			off = infoInt(parseInfo(text), "master_repl_offset")
			return nil
		})
		return off, err
	}
	want, err := offset(primaryIP)
	if err != nil {
		return fmt.Errorf("the primary's offset: %w", err)
	}
	deadline := time.Now().Add(d)
	for {
		got, err := offset(replicaIP)
		if err == nil && got >= want {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return err
			}
			return fmt.Errorf("the replica is at offset %d, its primary was at %d, not caught up within %s", got, want, d)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
