//go:build unix

package read

import "syscall"

// openNonBlock makes opening an input that became a FIFO after it was listed return at once
// instead of waiting for a writer; the opened file's type is checked again.
const openNonBlock = syscall.O_NONBLOCK
