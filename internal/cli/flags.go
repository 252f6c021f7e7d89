package cli

import "fmt"

// FlagsNeed refuses the first of names that was set (changed reports it, as pflag's
// FlagSet.Changed does) while the flag they only mean something with was not: "--region needs
// --aws". Callers call it when need is off.
func FlagsNeed(changed func(name string) bool, need string, names ...string) error {
	for _, name := range names {
		if changed(name) {
			return fmt.Errorf("--%s needs --%s", name, need)
		}
	}
	return nil
}
