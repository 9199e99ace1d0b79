"""Small utilities with one home each: free ports (net), file locks (flock), file digests (digest), Kubernetes
version parsing (kubeversion), the git questions the release checks ask (git). They import nothing above the core."""
