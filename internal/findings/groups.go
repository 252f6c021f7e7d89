package findings

// Group is the findings of one rule at one severity in a section, as every printer shows them:
// one heading, then each resource. A rule's remediation is usually the rule's own text, the same
// for every object; some checks write one per object (the terminate command of each zombie
// instance, NK801), and a printer that showed the first finding's for the whole group would
// drop the others. Groups tells the two apart, so that text and HTML print the same fixes.
type Group struct {
	Findings []Finding
	// Fix is the remediation every finding of the group shares ("" when none has one, or when
	// they differ: then PerObject is set).
	Fix string
	// PerObject says the findings' remediations differ: each finding's own Remediation is
	// printed beside it (an empty one prints nothing).
	PerObject bool
}

// Groups splits findings, sorted as Report.Sections sorts a section's, into runs of one rule and
// severity, and says of each whether its remediation is shared or per object.
func Groups(fs []Finding) []Group {
	var out []Group
	for i := 0; i < len(fs); {
		j := i
		for j < len(fs) && fs[j].Code == fs[i].Code && fs[j].Severity == fs[i].Severity {
			j++
		}
		g := Group{Findings: fs[i:j], Fix: fs[i].Remediation}
		for _, f := range g.Findings[1:] {
			if f.Remediation != g.Fix {
				g.Fix, g.PerObject = "", true
				break
			}
		}
		out = append(out, g)
		i = j
	}
	return out
}
