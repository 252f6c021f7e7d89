package kubeletsim

// NodeLabels is labels (the defaults of an EKS managed node group with Config.Labels over them),
// for the external tests: they use testenv's fixtures, and testenv imports this package.
func (c Config) NodeLabels() map[string]string { return c.labels() }
