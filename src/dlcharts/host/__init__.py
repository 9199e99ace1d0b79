"""The host's tooling, which the images, the chart repository and the embedded cluster share: the pinned binaries
built from Go modules (binaries), processes started and stopped by pid file (procs), certificates from a throwaway
CA (pki), the local OCI registry and its login (registry, registry_access), the machine's preflight (preflight,
host-packages.txt) and host commands and mounts (system)."""
