// Command broken does not compile, for gobuild's test.
package main

func main() { undefinedName() }
