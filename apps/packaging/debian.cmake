# The Debian packages, from the install components (scripts/package/deb.sh runs cpack; README,
# "Installing on every node: the Debian package"):
#
#   pltrun_VERSION-REV_ARCH.deb     component "runtime": pltrun, pltrun-store,
#                                   libpltrun.so.MAJOR.MINOR, man pages, bash, zsh and fish
#                                   completion, the commented /etc/pltrun.toml, the store's
#                                   systemd unit (not enabled) and its defaults
#   pltrun-dev_VERSION-REV_ARCH.deb     component "dev": headers, libpltrun.a, the libpltrun.so
#                                   link, CMake's and pkg-config's files
#   pltrun-dbgsym_VERSION-REV_ARCH.ddeb the debug symbols of pltrun's ELF files, found by their
#                                   build id under /usr/lib/debug/.build-id
#
# Two packages, not one: every node of a cluster needs the launcher, and only the machines
# that build programs against libpltrun need the headers, and with them libssl-dev.
# The shared library goes with the programs (a program linked against it needs it on every
# node), not in a libpltrun0.1 package of its own: one package to install on a node.

# Installed by the package only (EXCLUDE_FROM_ALL: `cmake --install` into a prefix, as the
# consumer test does, leaves them out): Debian's copyright file (LICENSE by reference to
# /usr/share/common-licenses/Apache-2.0, as Debian's policy asks) and changelog (the Debian
# revision makes it changelog.Debian.gz), the store's unit and its defaults and the
# commented site config in /etc (hence CPACK_SET_DESTDIR below).
set(pltrun_debian_dir ${CMAKE_CURRENT_SOURCE_DIR}/debian)
string(TIMESTAMP pltrun_changelog_date "%a, %d %b %Y %H:%M:%S +0000" UTC)  # SOURCE_DATE_EPOCH when set
set(pltrun_debian_version ${PROJECT_VERSION}-${PLTRUN_DEBIAN_REVISION})
configure_file(${pltrun_debian_dir}/changelog.in ${CMAKE_CURRENT_BINARY_DIR}/changelog.Debian @ONLY)
execute_process(COMMAND gzip -9nc ${CMAKE_CURRENT_BINARY_DIR}/changelog.Debian
  OUTPUT_FILE ${CMAKE_CURRENT_BINARY_DIR}/changelog.Debian.gz)
set(pltrun_debian_docs ${pltrun_debian_dir}/copyright ${CMAKE_CURRENT_BINARY_DIR}/changelog.Debian.gz)
install(FILES ${pltrun_debian_docs} DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/pltrun COMPONENT runtime EXCLUDE_FROM_ALL)
install(FILES ${pltrun_debian_docs} DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/pltrun-dev COMPONENT dev EXCLUDE_FROM_ALL)
set(pltrun_store_dir ${PROJECT_SOURCE_DIR}/apps/pltrun-store)
install(FILES ${pltrun_store_dir}/pltrun-store.service DESTINATION lib/systemd/system COMPONENT runtime EXCLUDE_FROM_ALL)
install(FILES ${pltrun_store_dir}/pltrun-store.default DESTINATION /etc/default RENAME pltrun-store
  COMPONENT runtime EXCLUDE_FROM_ALL)
install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/pltrun.toml DESTINATION /etc COMPONENT runtime EXCLUDE_FROM_ALL)
# lintian's one override, and why: debian/lintian-overrides.
install(FILES ${pltrun_debian_dir}/lintian-overrides DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides RENAME pltrun
  COMPONENT runtime EXCLUDE_FROM_ALL)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME pltrun)
set(CPACK_PACKAGE_VENDOR "The pltrun authors")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# The Debian revision: Version: 0.1.0-1, pltrun_0.1.0-1_amd64.deb.
set(CPACK_DEBIAN_PACKAGE_RELEASE ${PLTRUN_DEBIAN_REVISION})
# The prefix is /usr whatever the build's CMAKE_INSTALL_PREFIX; DESTDIR staging, so that
# /etc/default/pltrun-store lands in the staging directory too.
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_SET_DESTDIR ON)
# cpack first builds the build tree's preinstall target, which builds everything unless this
# is set: the package test packages, while other tests run, what CTest is testing, and must
# never rebuild under them. scripts/package/deb.sh builds what the packages hold itself. (So
# `make install` installs what is built, as `cmake --install` always does.)
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON CACHE BOOL "The install target does not build everything first")
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # pltrun_0.1.0-1_amd64.deb
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${PLTRUN_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "${PROJECT_HOMEPAGE_URL}")
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# Depends from the ELF files' needs (dpkg-shlibdeps); a shlibs file so that programs built
# against libpltrun.so get "Depends: pltrun (>= VERSION)" from dpkg-shlibdeps in turn.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME pltrun)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION "launcher for distributed training jobs (a torchrun replacement)
pltrun starts and supervises the workers of a distributed job on one node or
many: torchrun's flags and environment, static and elastic (c10d or etcd)
rendezvous, restarts, Slurm, and many hosts from one shell over ssh.
pltrun-store is the rendezvous store (PyTorch's TCPStore protocol) for a
dedicated host, with a systemd unit (not enabled). Also libpltrun, the client
library that programs started by pltrun link.")
# Stripped binaries; their debug symbols in pltrun-dbgsym (.ddeb), by build id.
set(CPACK_DEBIAN_RUNTIME_DEBUGINFO_PACKAGE ON)
# The conffile; ldconfig through dpkg's trigger; the maintainer scripts that stop, restart
# and forget the store's unit (debian/postinst says why they also keep CPack's ldconfig
# calls out).
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA ${pltrun_debian_dir}/conffiles ${pltrun_debian_dir}/triggers
    ${pltrun_debian_dir}/postinst ${pltrun_debian_dir}/prerm ${pltrun_debian_dir}/postrm)

set(CPACK_DEBIAN_DEV_PACKAGE_NAME pltrun-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEV_DEPENDS runtime)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)  # pltrun-dev: Depends: pltrun (= VERSION)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libssl-dev")  # pltrunConfig.cmake and pltrun.pc need libcrypto's
set(CPACK_DEBIAN_DEV_DESCRIPTION "pltrun's client library: headers, static library, CMake and pkg-config files
For C, C++ and CUDA programs started by pltrun: ranks, the launcher's store,
barrier, broadcast and all-gather, a distributed sampler, and NCCL set-up, with
a C API. find_package(pltrun CONFIG) gives pltrun::client (shared) and
pltrun::client_static; pkg-config pltrun the same.")
# libpltrun.a keeps no debug information (as Debian's dh_strip does with archives); the
# debug package gets right md5sums and a documentation directory (CPack 3.25 gets neither).
set(CPACK_PRE_BUILD_SCRIPTS ${CMAKE_CURRENT_SOURCE_DIR}/strip-archives.cmake)
set(CPACK_POST_BUILD_SCRIPTS ${CMAKE_CURRENT_SOURCE_DIR}/fix-dbgsym.cmake)
# `make package_source` (include(CPack) adds it): one tarball of the tracked kind of
# files, never the build trees beside the source.
set(CPACK_SOURCE_GENERATOR TGZ)
# (Regular expressions written twice escaped: CPack writes them out again.)
set(CPACK_SOURCE_IGNORE_FILES "/\\\\.git/" "/build[^/]*/" "/\\\\.gl/" "/\\\\.whl/" "__pycache__" "\\\\.swp$")

include(CPack)
