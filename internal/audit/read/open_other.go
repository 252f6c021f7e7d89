//go:build !unix

package read

// openNonBlock has no equivalent off Unix; the opened file's type is checked.
const openNonBlock = 0
