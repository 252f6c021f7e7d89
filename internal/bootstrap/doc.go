// Package bootstrap reads EC2 user data as cloud-init and nodeadm do, and holds the checks on it
// that `bundle --user-data` and `doctor --aws` share: the hostname, iptables and Docker commands
// of a bootstrap script (NK631-NK633), the parts that could not be read (NK635), and the kubelet
// settings the user data asks for (bootstrap.sh --kubelet-extra-args and --max-pods on AL2, a
// nodeadm NodeConfig on AL2023), which both commands judge with internal/rules.
//
// Everything here is pure: bytes in, parts, problems and findings out. Each reader is bounded
// (parts, nesting, what gzip may inflate to, problems listed), whatever the input, since user
// data is written by whoever can edit a launch template.
package bootstrap
