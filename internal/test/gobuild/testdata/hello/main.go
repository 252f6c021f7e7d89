// Command hello prints its arguments, for gobuild's test.
package main

import (
	"fmt"
	"os"
)

func main() { fmt.Println(os.Args[1:]) }
