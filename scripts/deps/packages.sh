# shellcheck shell=bash disable=SC2034 # the arrays are read by the sourcing script
# The Debian packages pltrun's scripts install (scripts/install-deps.sh), in two sets, and
# the package names the service check looks at (scripts/check/no-services.sh). Sourced,
# never run.

# What building pltrun (scripts/build.sh: the configure step finds Catch2 too, as it builds
# the tests' targets when asked) and running it needs, and the demo's workers: they are
# plain Python (scripts/demo_worker.py, the standard library only). `scripts/demo.sh`
# installs these alone. g++ and make rather than build-essential, whose dpkg-dev (and Perl)
# only the Debian package's build needs. None of them ships a service.
build_packages=(
  g++ make cmake
  libcli11-dev libboost1.81-dev nlohmann-json3-dev libspdlog-dev catch2 libssl-dev
  libtomlplusplus-dev  # the site config is read by a real TOML 1.0 parser (issue 29)
  python3
)

# The tests' and benchmarks' tools, which `scripts/test.sh` installs with the set above.
# The daemons among them (sshd, etcd, munge, slurmctld, slurmd) are started by the tests
# themselves, on loopback or in network namespaces; install-deps.sh keeps the packages' own
# services from starting or staying enabled (scripts/deps/services.sh).
test_packages=(
  pkg-config  # the consumer test builds against the installed libpltrun with it
  openssl hyperfine time procps iproute2
  openssh-server openssh-client
  clang libclang-rt-14-dev clang-format-14
  etcd-server etcd-client  # the etcd rendezvous backend's tests start real members (issue 13)
  slurmctld slurmd slurm-client munge  # the real-Slurm tests start a two-node cluster (issue 15)
  # The Debian package (scripts/package/deb.sh, issue 16): man pages, dependencies, stripping;
  # its test checks the debug symbols and the store's unit, and installs it in a chroot.
  help2man dpkg-dev file gdb systemd debootstrap elfutils
  lintian  # the package test runs it (issue 29)
  zsh fish  # the package test completes command lines in them (issue 29)
  mypy  # the Python package's types, checked for Python 3.8 (issue 45)
  python3-venv  # the wheel's tests and benchmark install it into venvs of Debian's python3 (issue 45)
  # Servers the tests start themselves (issue 47: prometheus scrapes pltrun's metrics) go here.
)

# --with-torch: Debian's python3-torch (torch 1.13, CPU, gloo), for the PyTorch
# interoperability tests; it is run by /usr/bin/python3.
torch_packages=(python3-torch)
