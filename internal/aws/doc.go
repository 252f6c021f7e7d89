// Package aws is nodekeeper's only door to AWS: one narrow interface per AWS API group the
// commands call (EC2 and its launch templates, Auto Scaling, CloudWatch metrics, and the managed
// node groups' launch templates without EKS's types), thin helpers over the AWS SDK for Go v2
// that paginate every call with the SDK's paginators, and the mapping from an AccessDenied
// answer to the IAM permission that is missing. The services only the CLI calls, CloudWatch Logs
// and EKS, and the building of every client are in allclients, so that the controller, which
// links this package through doctor, links neither of those SDK clients.
//
// The interfaces take and return the SDK's own types, so that the SDK clients satisfy them
// directly and the stateful in-memory implementation in awsfake can stand in for them in tests.
// Nothing here runs unless a command was asked to talk to AWS (--aws, --cloudwatch): building
// clients reads credentials, and the commands only do that behind those flags.
package aws
