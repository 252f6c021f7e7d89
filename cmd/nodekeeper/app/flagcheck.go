package app

import (
	"fmt"
	"time"
)

// flagValue is a numeric flag with its value, for refuseNegative.
type flagValue struct {
	name  string
	value int64
	show  string
}

func intFlag(name string, v int64) flagValue { return flagValue{name, v, fmt.Sprint(v)} }

func durationFlag(name string, d time.Duration) flagValue {
	return flagValue{name, int64(d), d.String()}
}

// refuseNegative is the usage error for the first flag whose value is negative. The readers
// behind these flags take 0 (or less) as "use the default"; a negative value on the command
// line is a mistake, not a request for the default, and is refused naming the flag.
func refuseNegative(flags ...flagValue) error {
	for _, f := range flags {
		if f.value < 0 {
			return fmt.Errorf("--%s must not be negative (got %s)", f.name, f.show)
		}
	}
	return nil
}
