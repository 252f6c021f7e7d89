//go:build !unix

package app

// openNonBlock has no equivalent off Unix; the file's type is checked before and after opening.
const openNonBlock = 0
