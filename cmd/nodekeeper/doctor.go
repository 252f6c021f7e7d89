package main

import "github.com/nodekeeper/nodekeeper/internal/doctor"

func doctorDefaultMinCNI() string { return doctor.DefaultMinCNIVersion.String() }
