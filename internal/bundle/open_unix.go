//go:build unix

package bundle

import "syscall"

// noFollowNonBlock makes opening a member of a collector directory refuse a symbolic link swapped
// in after the listing and not wait on a FIFO; the opened file's type is checked again anyway.
const noFollowNonBlock = syscall.O_NOFOLLOW | syscall.O_NONBLOCK
