"""The job sandbox: every attempt's user code runs in a container of its own.

An OCI runtime from Debian's packages (runc; crun on a pure cgroup v2 host) starts it from
a bundle :mod:`job_gateway.sandbox.oci` describes; :mod:`job_gateway.sandbox.container`
is the trusted side that starts, feeds, watches and reaps it; :mod:`job_gateway.sandbox.runner`
is the only Gridweave code inside (see docs/architecture.md, "The job sandbox").
"""
