"""What each local image holds: a Debian suite and packages, PyPI requirements, and the image config.

Each image stands in for an image the charts' values.yaml names, under the same repository path and tag
where that is honest, so pointing a chart at the local registry changes only the registry part. Where
the tag must differ, ``differs`` says why (it is printed by ``dlcharts images build --list``).
"""

from __future__ import annotations

import dataclasses
import shlex

from dlcharts.catalogue import image_values

#: Debian suites the images are built from: the Python and glibc they ship, which decide the wheels.
SUITES: dict[str, tuple[str, str]] = {
    "bookworm": ("3.11", "2.36"),
    "trixie": ("3.13", "2.41"),
}

VENV = "/opt/venv"
_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# busybox's applets that Debian's own packages do not provide (nslookup above all, which the charts'
# peer-wait script runs and whose "Name:" lines it reads), linked into /usr/local/bin. Run by
# mmdebstrap as a customize hook: $1 is the root file system.
_BUSYBOX_APPLETS = (
    'for a in $(chroot "$1" /usr/bin/busybox --list); do '
    'for d in usr/local/bin usr/bin usr/sbin; do [ -e "$1/$d/$a" ] && continue 2; done; '
    'ln -s /usr/bin/busybox "$1/usr/local/bin/$a"; done'
)

# The package set of every image whose framework comes from PyPI: they share one root file system layer, so a
# node pulls it once. An image whose framework is a Debian package adds it to these.
_BASE_PACKAGES = ("busybox", "ca-certificates", "python3", "python3-venv")


# Appended to torch/distributed/__init__.py of the pytorch image (see there why): a TCPStore created without
# use_libuv takes it from USE_LIBUV, as torch's own env:// rendezvous already does, but off when unset.
_TCPSTORE_DEFAULT = """
# Added by the dl-charts image build (Debian's torch has no libuv TCPStore server, the binding's default).
if is_available():
    def _dlcharts_use_libuv_from_env(init):
        def __init__(self, *args, **kwargs):
            if len(args) < 9 and "use_libuv" not in kwargs:
                kwargs["use_libuv"] = __import__("os").environ.get("USE_LIBUV", "0") == "1"
            init(self, *args, **kwargs)
        return __init__
    TCPStore.__init__ = _dlcharts_use_libuv_from_env(TCPStore.__init__)
"""
_TORCH_TCPSTORE_USE_LIBUV = (
    f'printf %s {shlex.quote(_TCPSTORE_DEFAULT)} >> "$1/usr/lib/python3/dist-packages/torch/distributed/__init__.py"'
)


# Open MPI with an SSH server and client, and mpi4py: what the MPI charts' launcher (mpirun over ssh) and workers
# (sshd, through which every rank starts) need. The hook drops the host keys openssh-server's postinst generated
# (the charts' sshd uses the release's key; an image must not carry a private key) and creates /run/sshd, which
# a root sshd's privilege separation needs and which only an init system would create.
_MPI_PACKAGES = (*_BASE_PACKAGES, "openmpi-bin", "openssh-client", "openssh-server", "python3-mpi4py")
_SSHD_LAYOUT = 'rm -f "$1"/etc/ssh/ssh_host_*_key "$1"/etc/ssh/ssh_host_*_key.pub && install -d -m 0755 "$1/run/sshd"'
# Horovod's Python dependencies (cffi also to build it) and the framework it is built for, from Debian (the venv
# sees them)
_HOROVOD_RUNTIME = (
    "python-is-python3", "python3-cffi", "python3-cloudpickle", "python3-packaging", "python3-psutil", "python3-torch",
    "python3-torchvision", "python3-yaml",
)  # fmt: skip
# what building Horovod's PyTorch extension needs besides that: a compiler, CMake, the headers of Python, torch
# (libtorch-dev, whose headers include pybind11's: pybind11-dev), and Open MPI's
_HOROVOD_BUILD = (
    "build-essential", "cmake", "libopenmpi-dev", "libtorch-dev", "pybind11-dev", "python3-dev", "python3-distutils",
    "python3-pip", "python3-setuptools", "python3-wheel",
)  # fmt: skip
_HOROVOD_BUILD_ENV = (
    "HOROVOD_WITH_PYTORCH=1", "HOROVOD_WITH_MPI=1", "HOROVOD_WITHOUT_TENSORFLOW=1", "HOROVOD_WITHOUT_MXNET=1",
    "HOROVOD_WITHOUT_GLOO=1", "HOROVOD_CPU_OPERATIONS=MPI",
)  # fmt: skip
#: proves an MPI image: Open MPI's mpirun runs two mpi4py ranks that allreduce (as root: the build runs as root)
_MPI_CHECK = (
    "command -v sshd ssh >/dev/null && mpirun --allow-run-as-root --oversubscribe -np 2 python3 -c "
    "'from mpi4py import MPI; c = MPI.COMM_WORLD; assert c.allreduce(c.rank + 1) == 3'"
)

# DeepSpeed's dependencies from PyPI (torch, numpy and packaging come from Debian: the venv sees them), and sympy
# 1.13.1, which Debian's torch declares exactly (pip checks an installed requirement's own; trixie has 1.13.3)
_DEEPSPEED_DEPS = (
    "einops",
    "hjson",
    "msgpack",
    "ninja",
    "psutil",
    "py-cpuinfo",
    "pydantic>=2",
    "tqdm",
    "sympy==1.13.1",
)
# DeepSpeed's setup.py imports torch and its accelerator code. One op is compiled ahead (the others are not:
# DS_BUILD_OPS=0): the CPU accelerator's shared-memory collectives (shm_comm), which deepspeed.init_distributed()
# loads on Linux, compiling it on the spot when it was not built in, which needs a C++ compiler in the image
_DEEPSPEED_BUILD_ENV = ("DS_BUILD_OPS=0", "DS_BUILD_SHM_COMM=1", "DS_ACCELERATOR=cpu")
# what compiling it needs: a compiler, torch's C++ headers (libtorch-dev, whose headers include pybind11's) and Python's
_DEEPSPEED_BUILD = ("g++", "libtorch-dev", "pybind11-dev", "python3-dev", "python3-pip", "python3-wheel")


@dataclasses.dataclass(frozen=True)
class ImageDef:
    """One image: a root file system from ``suite`` + ``packages`` (one layer), and when ``requirements``
    is not empty, a second layer with a virtual environment at /opt/venv holding them (installed
    offline from wheels downloaded on the host)."""

    name: str
    repository: str
    tag: str
    stands_for: str  # the values.yaml image it replaces
    suite: str = "trixie"
    packages: tuple[str, ...] = _BASE_PACKAGES
    hooks: tuple[str, ...] = (_BUSYBOX_APPLETS,)
    requirements: tuple[str, ...] = ()
    #: requirements with no usable wheel, built from their PyPI sdist into the wheelhouse (``pip wheel``, no
    #: network) in a build root: this image's suite and packages plus ``build_packages``, so the wheel links the
    #: image's own Python, glibc and Debian libraries. Each is also a requirement.
    sdists: tuple[str, ...] = ()
    build_packages: tuple[str, ...] = ()
    build_env: tuple[str, ...] = ()  # NAME=value for the build (e.g. a framework's feature switches)
    #: the venv sees the Debian Python packages of ``packages`` (e.g. python3-torch, which a wheel was built against)
    system_site_packages: bool = False
    cmd: tuple[str, ...] = ("sh",)
    user: str = "1000:1000"
    workdir: str = "/"
    env: tuple[str, ...] = ()
    differs: str = ""
    check: str = ""  # a command run in the finished root file system to prove it works

    @property
    def values(self) -> tuple[str, ...]:
        """``"<chart>:<values path>"`` of every image value this image stands for (dlcharts.catalogue; the
        cluster tier checks that each names a value of its chart)."""
        return image_values(self.name)

    @property
    def reference(self) -> str:
        return f"{self.repository}:{self.tag}"

    @property
    def python(self) -> str:
        return SUITES[self.suite][0]

    @property
    def glibc(self) -> str:
        return SUITES[self.suite][1]

    def config_env(self) -> tuple[str, ...]:
        path = f"{VENV}/bin:{_PATH}" if self.requirements else _PATH
        return (f"PATH={path}", "LANG=C.UTF-8", "HOME=/tmp", *self.env)


IMAGES: dict[str, ImageDef] = {
    image.name: image
    for image in (
        ImageDef(
            name="busybox",
            repository="busybox",
            tag="1.37.0",
            stands_for="peerWait.image busybox:1.37.0 (peer-wait init container, helm test pod; every training chart)",
            check="command -v nslookup >/dev/null && busybox | head -1 | grep -q 'v1.37.0'",
            differs=(
                "Debian trixie's busybox 1.37.0 (nslookup and the other applets Debian lacks in /usr/local/bin) on a "
                "Debian minbase with python3, not the upstream static busybox image (larger: it is the root layer "
                "the framework images share)"
            ),
        ),
        ImageDef(
            name="python",
            repository="python",
            tag="3.13-alpine",
            stands_for="startWatch.image python:3.13-alpine (the start watch; every training chart)",
            check="python3 -c 'import json, ssl, urllib.request'",
            differs=(
                "Debian trixie's python3 3.13 on the root file system the other images share, not Alpine: the start "
                "watch needs only python3 and its standard library"
            ),
        ),
        ImageDef(
            name="tensorflow",
            repository="tensorflow/tensorflow",
            tag="2.21.0",
            stands_for="tensorflow-dist defaults.image tensorflow/tensorflow:2.21.0-gpu",
            requirements=("tensorflow-cpu==2.21.0",),
            cmd=("python3",),
            env=("TF_CPP_MIN_LOG_LEVEL=1",),
            check="python3 -c 'import tensorflow as tf; assert tf.__version__ == \"2.21.0\", tf.__version__'",
            differs="CPU build (PyPI tensorflow-cpu 2.21.0): the tag is the upstream CPU tag 2.21.0, not 2.21.0-gpu",
        ),
        ImageDef(
            name="mxnet",
            repository="mxnet/python",
            tag="1.9.1_cpu_py3",
            stands_for="mxnet-dist defaults.image mxnet/python:1.9.1_gpu_cu112_py3",
            suite="bookworm",  # Python 3.11: numpy 1.23 (below) has no wheel for trixie's 3.13
            # mxnet 1.9.1 asks for numpy<2 but uses np.bool, which numpy 1.24 removed
            requirements=("mxnet==1.9.1", "numpy<1.24"),
            cmd=("python3",),
            packages=(*_BASE_PACKAGES, "libgomp1", "libquadmath0"),  # libmxnet.so links OpenMP and libquadmath
            check=(
                'python3 -c \'import mxnet as mx; assert mx.__version__ == "1.9.1", mx.__version__; '
                "mx.nd.ones((2, 2)).asnumpy()'"
            ),
            differs=(
                "PyPI's mxnet 1.9.1 CPU wheel (openblas, MKL-DNN) with numpy 1.23 on Debian bookworm; the CPU tag of "
                "upstream's naming scheme, not 1.9.1_gpu_cu112_py3"
            ),
        ),
        ImageDef(
            name="pytorch",
            repository="pytorch/pytorch",
            tag="2.6.0-cpu",
            stands_for="pytorch-dist defaults.image pytorch/pytorch:2.9.1-cuda12.8-cudnn9-runtime",
            packages=(*_BASE_PACKAGES, "python3-torch", "python-is-python3"),
            cmd=("python3",),
            # Debian builds torch without libuv, whose TCPStore server is the Python binding's default
            # (use_libuv=True); torchrun's c10d rendezvous and its agent store create TCPStores without saying,
            # and fail ("use_libuv was requested but PyTorch was build without libuv support"). The hook makes
            # that default come from USE_LIBUV, as torch's env:// rendezvous already does; the image sets 0.
            hooks=(_BUSYBOX_APPLETS, _TORCH_TCPSTORE_USE_LIBUV),
            env=("USE_LIBUV=0",),
            check=(
                "command -v torchrun >/dev/null && python3 -c 'import datetime, torch, torch.distributed as d; "
                'assert torch.__version__.startswith("2.6.0"), torch.__version__; assert d.is_gloo_available(); '
                'd.TCPStore("127.0.0.1", 0, 1, True, timeout=datetime.timedelta(seconds=10))\''
            ),
            differs=(
                "Debian trixie's python3-torch 2.6.0 (a CPU build with the gloo and MPI backends, and torchrun): "
                "PyPI's x86_64 torch wheels are CUDA builds that import only with about 3 GB of NVIDIA libraries, "
                "and PyTorch's own CPU wheel index is not reachable here. Upstream has no CPU tag: 2.6.0-cpu names "
                "what this is, not 2.9.1-cuda12.8-cudnn9-runtime"
            ),
        ),
        ImageDef(
            name="jax",
            repository="nvidia/jax",  # nvcr.io/nvidia/jax: global.imageRegistry replaces the host
            tag="0.12.0.1-cpu",
            stands_for="jax-dist defaults.image nvcr.io/nvidia/jax:25.10-py3",
            requirements=("jax==0.12.0.1", "jaxlib==0.12.0.1"),
            cmd=("python3",),
            check=(
                'python3 -c \'import jax; assert jax.__version__ == "0.12.0.1", jax.__version__; '
                'jax.config.update("jax_cpu_collectives_implementation", "gloo"); '
                "assert float(jax.numpy.ones(3).sum()) == 3.0'"
            ),
            differs=(
                "PyPI's jax and jaxlib 0.12.0.1 CPU wheels (with their numpy, scipy, ml_dtypes and opt_einsum) on "
                "Debian trixie's Python 3.13 (jax 0.11 and later need Python 3.12 or newer): NVIDIA's image is a "
                "CUDA build of a JAX of its own month; the tag names what this is, not 25.10-py3"
            ),
        ),
        ImageDef(
            name="horovod",
            repository="horovod/horovod",
            tag="0.28.1-cpu-torch1.13",
            stands_for="horovod-mpi defaults.image horovod/horovod:0.28.1",
            # Horovod 0.28.1 builds against bookworm's torch 1.13 (C++14, distutils); trixie's torch 2.6 is newer
            suite="bookworm",
            packages=(*_MPI_PACKAGES, *_HOROVOD_RUNTIME),
            hooks=(_BUSYBOX_APPLETS, _SSHD_LAYOUT),
            requirements=("horovod==0.28.1",),
            sdists=("horovod==0.28.1",),
            build_packages=_HOROVOD_BUILD,
            build_env=_HOROVOD_BUILD_ENV,
            system_site_packages=True,  # Debian's torch, torchvision and Horovod's Python dependencies
            cmd=("python3",),
            check=(
                "horovodrun --check-build | grep -q '\\[X\\] PyTorch' && "
                "mpirun --allow-run-as-root --oversubscribe -np 2 python3 -c "
                "'import torch, horovod.torch as hvd; hvd.init(); "
                "assert hvd.allreduce(torch.tensor([hvd.rank() + 1.0]), op=hvd.Sum).item() == 3'"
            ),
            differs=(
                "Horovod 0.28.1 built from its PyPI sdist (MPI controller and CPU operations, PyTorch only, no Gloo) "
                "against Debian bookworm's torch 1.13.1 CPU build, torchvision 0.14 and Open MPI 4.1, with OpenSSH "
                "and mpi4py: upstream's image is a CUDA build with TensorFlow, PyTorch and MXNet; not 0.28.1"
            ),
        ),
        ImageDef(
            name="deepspeed",
            repository="kubeflow/trainer/deepspeed-runtime",  # ghcr.io/...: global.imageRegistry replaces the host
            tag="0.19.8-cpu-torch2.6",
            stands_for="deepspeed-dist defaults.image ghcr.io/kubeflow/trainer/deepspeed-runtime:v2.2.0",
            # python3-setuptools: Debian's torch declares it (Python >= 3.12), so pip checks for it in the venv
            packages=(*_MPI_PACKAGES, "python3-torch", "python3-setuptools", "python-is-python3", "hostname"),
            hooks=(_BUSYBOX_APPLETS, _SSHD_LAYOUT, _TORCH_TCPSTORE_USE_LIBUV),
            requirements=("deepspeed==0.19.8", *_DEEPSPEED_DEPS),
            sdists=("deepspeed==0.19.8",),
            build_packages=_DEEPSPEED_BUILD,
            build_env=_DEEPSPEED_BUILD_ENV,
            system_site_packages=True,  # Debian's torch (and numpy, packaging), which DeepSpeed runs on
            cmd=("python3",),
            env=("USE_LIBUV=0", "DS_ACCELERATOR=cpu"),
            check=(
                "command -v deepspeed sshd ssh >/dev/null && python3 -c 'import deepspeed, torch; "
                'assert deepspeed.__version__ == "0.19.8", deepspeed.__version__; '
                "from deepspeed.accelerator import get_accelerator as a; "
                'assert a().device_name() == "cpu" and a().communication_backend_name() == "gloo"; '
                "from deepspeed.comm.torch import build_shm_op; assert build_shm_op() is not None' && " + _MPI_CHECK
            ),
            differs=(
                "DeepSpeed 0.19.8 built from its PyPI sdist with one op compiled, the CPU shared-memory collectives "
                "(DS_BUILD_OPS=0 DS_BUILD_SHM_COMM=1), on Debian trixie's "
                "torch 2.6.0 CPU build with Open MPI, OpenSSH and mpi4py; DS_ACCELERATOR=cpu, so DeepSpeed talks gloo "
                "(no oneCCL). Kubeflow Trainer's image is a CUDA build; the tag names what this is, not v2.2.0"
            ),
        ),
        ImageDef(
            name="cntk",
            repository="cntk/release",  # mcr.microsoft.com/cntk/release: global.imageRegistry replaces the host
            tag="mpi4py-openmpi4.1-cpu",
            stands_for="cntk-dist defaults.image mcr.microsoft.com/cntk/release:2.7-gpu-python3.5-cuda10.0-cudnn7.3",
            suite="bookworm",
            packages=_MPI_PACKAGES,
            hooks=(_BUSYBOX_APPLETS, _SSHD_LAYOUT),
            cmd=("python3",),
            user="0:0",  # as the CNTK images: the chart runs cntk-dist as root
            check=_MPI_CHECK,
            differs=(
                "NOT CNTK: CNTK 2.7 has no wheel for any current Python (its last ones are for Python 3.5-3.6). Debian "
                "bookworm's Open MPI 4.1, OpenSSH and mpi4py 3.1, to run the chart's MPI launcher and workers with an "
                "mpi4py program through cntk.python.command; not 2.7-gpu-python3.5-cuda10.0-cudnn7.3"
            ),
        ),
    )
}
