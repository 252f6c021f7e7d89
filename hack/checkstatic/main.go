// Command checkstatic fails unless every file named on the command line is a statically linked
// ELF executable: no program interpreter (PT_INTERP / .interp) and no dynamic section, so it runs on
// any Linux of its architecture, distroless/static included. `make build` runs it on bin/nodekeeper.
// Files that are not ELF (a darwin or windows build) are reported and skipped.
package main

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: checkstatic BINARY...")
		os.Exit(2)
	}
	failed := false
	for _, path := range os.Args[1:] {
		if err := checkStatic(path); err != nil {
			fmt.Fprintf(os.Stderr, "checkstatic: %s: %v\n", path, err)
			failed = true
			continue
		}
		fmt.Printf("%s: static\n", path)
	}
	if failed {
		os.Exit(1)
	}
}

// errNotELF marks a file that is not an ELF binary.
var errNotELF = errors.New("not an ELF file")

func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		var fe *elf.FormatError
		if errors.As(err, &fe) {
			return fmt.Errorf("%w: %v", errNotELF, err)
		}
		return err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("dynamically linked: it has a program interpreter (build with CGO_ENABLED=0)")
		}
		if p.Type == elf.PT_DYNAMIC {
			return errors.New("dynamically linked: it has a dynamic section (build with CGO_ENABLED=0)")
		}
	}
	if s := f.Section(".interp"); s != nil {
		return errors.New("dynamically linked: it has an .interp section (build with CGO_ENABLED=0)")
	}
	return nil
}
