package kube

import (
	"fmt"
	"strings"

	"k8s.io/client-go/rest"

	"github.com/nodekeeper/nodekeeper/internal/buildinfo"
)

// FieldManager names nodekeeper's writes in managedFields and audit logs.
const FieldManager = "nodekeeper"

// Protobuf content types: requests and answers in protobuf, JSON accepted from an API that has
// no protobuf encoding.
const (
	protobufContentType = "application/vnd.kubernetes.protobuf"
	protobufAccept      = "application/vnd.kubernetes.protobuf,application/json"
)

// RateLimit is a client-side request rate limit. QPS 0 means no client-side limit, everywhere in
// nodekeeper (client-go alone would read 0 as its default of 5 requests a second).
type RateLimit struct {
	QPS   float32
	Burst int
}

// Fixed limits of the controller's side clients: they must neither starve nor be starved by the
// lease work, whatever --qps says.
var (
	// LeaderElection limits the leader election client (one renewal every few seconds).
	LeaderElection = RateLimit{QPS: 5, Burst: 10}
	// Events limits Event writes (zombie reports), so that a burst of zombies cannot flood the
	// API server with Events.
	Events = RateLimit{QPS: 10, Burst: 25}
)

// Validate reports a limit that cannot be used.
func (l RateLimit) Validate() error {
	if l.QPS < 0 || l.Burst < 0 {
		return fmt.Errorf("--qps and --burst must not be negative (0 means no client-side limit), got %g and %d", l.QPS, l.Burst)
	}
	return nil
}

// Apply sets the limit on cfg in place.
func (l RateLimit) Apply(cfg *rest.Config) {
	cfg.RateLimiter = nil
	if l.QPS == 0 {
		// A negative QPS is how client-go spells "no rate limiter".
		cfg.QPS, cfg.Burst = -1, 0
		return
	}
	cfg.QPS, cfg.Burst = l.QPS, max(l.Burst, 1)
}

// UserAgent is the user agent of a nodekeeper command: "nodekeeper/<version> (<command>)".
func UserAgent(command string) string {
	ua := "nodekeeper/" + buildinfo.Get().Version
	if command != "" {
		ua += " (" + command + ")"
	}
	return ua
}

// Configure returns a copy of base with the user agent of command and the rate limit applied,
// whose requests fail with a NoClusterError when no API server answers.
// The copy speaks JSON; see Protobuf.
func Configure(base *rest.Config, command string, limit RateLimit) *rest.Config {
	cfg := rest.CopyConfig(base)
	cfg.UserAgent = UserAgent(command)
	limit.Apply(cfg)
	explainUnreachable(cfg)
	return cfg
}

// SideConfig returns a copy of cfg (made by Configure) for a side client of the same command,
// with its own limit and role added to the user agent: "nodekeeper/<version> (controller,
// leader-election)". A side client's requests then never wait behind the main work's rate limit,
// and audit logs tell them apart.
func SideConfig(cfg *rest.Config, role string, limit RateLimit) *rest.Config {
	c := rest.CopyConfig(cfg)
	if ua, ok := strings.CutSuffix(c.UserAgent, ")"); ok && strings.HasPrefix(ua, UserAgent("")+" (") {
		c.UserAgent = ua + ", " + role + ")"
	} else {
		c.UserAgent = UserAgent(role)
	}
	limit.Apply(c)
	return c
}

// Protobuf returns a copy of cfg that speaks protobuf to the API server, which costs both sides a
// fraction of JSON's encoding and decoding for every lease, Node, pod and event.
func Protobuf(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.ContentType = protobufContentType
	c.AcceptContentTypes = protobufAccept
	return c
}

// IsProtobuf reports whether cfg asks for protobuf.
func IsProtobuf(cfg *rest.Config) bool { return cfg.ContentType == protobufContentType }
