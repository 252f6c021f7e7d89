//go:build unix

package app

import "syscall"

// openNonBlock makes opening a FIFO swapped in for a checked regular file return at once instead
// of waiting for a writer; the opened file's type is checked again.
const openNonBlock = syscall.O_NONBLOCK
