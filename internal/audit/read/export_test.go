package read

// Exported for the fuzz targets of the external test package (fuzz_pipeline_test.go).
var (
	FuzzFormat         = fuzzFormat
	CheckAllocBound    = checkAllocBound
	FormatSubscription = formatSubscription
)

const FuzzLimit = fuzzLimit
