package app

import (
	"context"
	"io/fs"

	"github.com/nodekeeper/nodekeeper/internal/cli"
)

// interruptible runs work in a goroutine and returns its error, or, as soon as ctx ends (the
// first Ctrl-C or SIGTERM), the interruption, leaving work behind. It is for work that does not
// watch ctx: a read of standard input or of a terminal blocks in the kernel until data comes,
// and the readers and analyses of audit and bundle run to their end. The process exits right
// after the command returns, so what is left behind ends with it; work must not write to the
// command's output.
func interruptible(ctx context.Context, work func() error) error {
	done := make(chan error, 1)
	go func() { done <- work() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return cli.Interrupted(ctx)
	}
}

// fileKind names a file type that is not a regular file, for the errors that refuse it.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO, which nodekeeper does not wait on"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	}
	return "type " + m.Type().String()
}
