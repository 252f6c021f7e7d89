package kube

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
)

// ConfigSource gives the rest config the connection flags select: ConnectionFlags in both
// binaries (NewKubectlConnectionFlags in the CLI, NewConnectionFlags in the controller's), or
// whatever else loads a rest config (a test's fixed one).
type ConfigSource interface {
	ToRESTConfig() (*rest.Config, error)
}

// Options are the client flags of one nodekeeper command: the kubeconfig flags (shared by every
// command, added once by the root command) and the command's own --qps, --burst and --chunk-size.
type Options struct {
	// ConfigFlags are kubectl's connection flags (--kubeconfig, --context, --server, ...).
	ConfigFlags ConfigSource
	// Command names the command in the user agent ("gc", "leases", ...).
	Command string
	// Limit is the client-side rate limit; QPS 0 means no client-side limit.
	Limit RateLimit
	// ChunkSize is the LIST page size.
	ChunkSize int64
}

// NewOptions returns options for command with its default rate limit.
func NewOptions(flags ConfigSource, command string, limit RateLimit) *Options {
	return &Options{ConfigFlags: flags, Command: command, Limit: limit, ChunkSize: DefaultChunkSize}
}

// AddFlags registers --qps, --burst and --chunk-size (the connection flags are the root's).
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.AddRateLimitFlags(fs)
	fs.Int64Var(&o.ChunkSize, "chunk-size", o.ChunkSize, "objects per LIST page")
}

// AddRateLimitFlags registers --qps and --burst only, for a command whose reads are not
// paginated LISTs of its own (the controller reads through informers).
func (o *Options) AddRateLimitFlags(fs *pflag.FlagSet) {
	fs.Float32Var(&o.Limit.QPS, "qps", o.Limit.QPS, "client-side rate limit in requests per second (0: no client-side limit; the API server's priority and fairness still applies)")
	fs.IntVar(&o.Limit.Burst, "burst", o.Limit.Burst, "client-side burst above --qps (ignored with --qps 0)")
}

// Validate reports flags that cannot be used.
func (o *Options) Validate() error {
	if err := o.Limit.Validate(); err != nil {
		return err
	}
	if o.ChunkSize <= 0 {
		return fmt.Errorf("--chunk-size must be positive, got %d", o.ChunkSize)
	}
	return nil
}

// RESTConfig loads the kubeconfig the flags select and configures it (user agent, rate limit;
// JSON: use Protobuf or NewClients for the bulk reads).
func (o *Options) RESTConfig() (*rest.Config, error) {
	if o.ConfigFlags == nil {
		return nil, errors.New("kube: no connection flags")
	}
	base, err := o.ConfigFlags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	return Configure(base, o.Command, o.Limit), nil
}

// Clients loads the kubeconfig and builds the clients.
func (o *Options) Clients() (*Clients, error) {
	cfg, err := o.RESTConfig()
	if err != nil {
		return nil, err
	}
	return NewClients(cfg)
}
