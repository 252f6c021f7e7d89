// Package cli is the command-line plumbing both nodekeeper binaries share: the exit codes and
// the one place an error reaches the terminal (Execute), kubectl's Complete/Validate/Run shape of
// every command (RunOptions), and the logging flags (-v, --vmodule, --logging-format).
//
// It imports cobra, pflag, klog and component-base's logging only, so that the controller's
// binary (cmd/nodekeeper-controller) can use it without the CLI's printers, AWS or readers.
package cli
