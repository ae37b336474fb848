// Package vgpu is the wire protocol shared by the vc-scheduler's deviceshare plugin and the
// vgpu-device-plugin: resource names, node and pod annotation keys, the encodings of the node
// device list and of pod device assignments, the handshake values, the two configuration
// files (device-config.yaml and the per-node config.json), the environment variables that
// carry a container's slice, which a pod may not set itself (containerenv.go), and the paths
// in a container that load HAMi-core, which a pod may not mount over (containermounts.go).
//
// The strings here must stay byte-for-byte compatible with upstream Volcano and the
// Project-HAMi volcano-vgpu-device-plugin, so that either half of this project can run against
// the upstream other half. Nothing else in the repository spells these strings out.
//
// Decoders never panic on bad input: they return an error that names the part of the value
// that is wrong and quotes the offending text, so that a caller can report it against the
// node or pod it came from. Encoders refuse values that would produce a string the decoders
// (ours or upstream's) would split differently.
package vgpu
