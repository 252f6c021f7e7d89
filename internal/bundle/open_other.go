//go:build !unix

package bundle

// noFollowNonBlock has no equivalent flags off Unix: os.Root already refuses links that leave the
// directory, and the opened file's type is checked again before it is read.
const noFollowNonBlock = 0
