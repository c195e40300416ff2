"""The all-in-one platform (``gridweave up``, ``make up``): every service on one machine.

The Kubernetes API (etcd + kube-apiserver through :mod:`gridweave_runtime.kubeapi`), the
embedded PostgreSQL, a local Ray, local object storage and each Gridweave service as its
own process, with all data under one state directory.
"""
