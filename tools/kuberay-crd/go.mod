// The KubeRay operator module, pinned for its CRD manifests (config/crd/bases): the tests
// install the RayCluster CRD from it. Nothing is built from it.
module gridweave.io/tools/kuberay-crd

go 1.24

require github.com/ray-project/kuberay/ray-operator v1.5.0
