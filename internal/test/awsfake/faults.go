package awsfake

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// before runs Cloud.Before, read under the lock and called outside it, so that a slow answer
// does not hold up the fake's other callers.
func (c *Cloud) before(ctx context.Context, permission string) error {
	c.mu.Lock()
	f := c.Before
	c.mu.Unlock()
	if f == nil {
		return nil
	}
	return f(ctx, permission)
}

// SetBefore replaces Cloud.Before while the fake is in use.
func (c *Cloud) SetBefore(f func(ctx context.Context, permission string) error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Before = f
}

// Throttled is EC2's answer to a caller over its API rate limit (RequestLimitExceeded), which
// the SDK's retryer treats as throttling.
func Throttled(permission string) error {
	return apiError("RequestLimitExceeded", "Request limit exceeded (%s)", permission)
}

// Hang is a Before that answers only when the call's context ends: an AWS that never answers.
func Hang(ctx context.Context, _ string) error {
	<-ctx.Done()
	return ctx.Err()
}

// SetEndlessPages sets Cloud.EndlessPages while the fake is in use.
func (c *Cloud) SetEndlessPages(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.EndlessPages = on
}

// endless, under EndlessPages, is the next page's number and a fresh NextToken; ok is false
// otherwise.
func (c *Cloud) endless() (n int, token *string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.EndlessPages {
		return 0, nil, false
	}
	c.endlessPage++
	return c.endlessPage, aws.String(fmt.Sprintf("endless-%d", c.endlessPage)), true
}
