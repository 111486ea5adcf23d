#===- cmake/QAttnPackage.cmake - install rules and the CMake package -------===#
#
# `cmake --install build [--prefix P]` puts the tools in P/bin, the libraries
# in P/lib, the headers (with the generated .inc files) in P/include, the
# Python package in P/lib/python3/dist-packages/qattn (docs/PYTHON.md), and a
# CMake package in P/lib/cmake/qattn, so that another project does
#
#   find_package(QAttn CONFIG REQUIRED)      # -DQAttn_DIR=P/lib/cmake/qattn
#   target_link_libraries(app PRIVATE QAttn::QAttnCAPI)
#
# (docs/EMBEDDING.md). Included at the end of the top-level CMakeLists.txt,
# after every target exists. Every library a listed one links PUBLIC must be
# listed too, or configuring fails with "requires target ... that is not in
# any export set".
#
#===----------------------------------------------------------------------===#
include(CMakePackageConfigHelpers)

set(QATTN_INSTALL_PACKAGEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/qattn" CACHE STRING
  "Where QAttnConfig.cmake goes, relative to the install prefix")

# The C++ libraries (static, over libMLIR.so), the C API (shared) and the
# MLIR-free runtime that loads artifacts.
set(QATTN_EXPORTED_LIBRARIES
  QAttnDialect QAttnTransforms QAttnConversionUtils QAttnToReference
  QAttnToGPU QAttnPipelines QAttnInitAll QAttnTarget QAttnCAPI qattn_runtime)
set(QATTN_EXPORTED_TOOLS qattn-opt qattn-compile qattn-run)

# add_llvm_executable gives the installed tools $ORIGIN/../lib alone; the
# packaged libMLIR.so is in the MLIR package's lib/, which is not on the
# loader's path on Debian.
set_property(TARGET qattn-opt qattn-compile APPEND PROPERTY
  INSTALL_RPATH "${LLVM_LIBRARY_DIR}")

install(TARGETS ${QATTN_EXPORTED_LIBRARIES}
  EXPORT QAttnTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS ${QATTN_EXPORTED_TOOLS}
  EXPORT QAttnTargets
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The runtime's C ABI for FFIs (python/qattn/runtime.py: QATTN_RUNTIME_LIB),
# not a CMake target of the package: C++ users link QAttn::qattn_runtime.
install(TARGETS qattn_runtime_c LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})

# Headers: the sources' .h and .td, the C API, the generated .inc files, and
# the runtime's headers (they live beside the runtime so that it builds on
# its own).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/qattn
                  ${PROJECT_SOURCE_DIR}/include/qattn-c
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h" PATTERN "*.td")
install(DIRECTORY ${PROJECT_BINARY_DIR}/include/qattn
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.inc"
  PATTERN "CMakeFiles" EXCLUDE)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/include/qattn
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h")

install(EXPORT QAttnTargets
  NAMESPACE QAttn::
  FILE QAttnTargets.cmake
  DESTINATION ${QATTN_INSTALL_PACKAGEDIR})

# What QAttnConfig.cmake needs to find the same MLIR again, and which
# targets include MLIR's and LLVM's headers.
set(QATTN_MLIR_VERSION "${LLVM_VERSION_MAJOR}.${LLVM_VERSION_MINOR}")
set(QATTN_MLIR_DIR "${MLIR_DIR}")
set(QATTN_MLIR_USERS ${QATTN_EXPORTED_LIBRARIES})
list(REMOVE_ITEM QATTN_MLIR_USERS qattn_runtime)
configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/QAttnConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/QAttnConfig.cmake
  INSTALL_DESTINATION ${QATTN_INSTALL_PACKAGEDIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_BINDIR)
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/cmake/QAttnConfigVersion.cmake
  VERSION ${QATTN_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/QAttnConfig.cmake
              ${PROJECT_BINARY_DIR}/cmake/QAttnConfigVersion.cmake
  DESTINATION ${QATTN_INSTALL_PACKAGEDIR})

# The Python package (docs/PYTHON.md): python/qattn into a site folder, with
# a generated qattn/_install.py that gives the prefix's bin/ and library
# folder relative to the package, so that an installed `import qattn` finds
# qattn-compile, qattn-run and libqattn_runtime_c.so wherever the prefix is
# (qattn/_locate.py). Debian's python3 searches lib/python3/dist-packages
# under /usr; under another prefix, put the folder on PYTHONPATH or choose
# one that python3 searches (e.g. lib/python3.11/dist-packages under
# /usr/local).
option(QATTN_INSTALL_PYTHON "Install the Python package qattn" ON)
set(QATTN_INSTALL_PYTHONDIR "lib/python3/dist-packages" CACHE STRING
  "Where the Python package qattn goes, relative to the install prefix (or absolute)")
if(QATTN_INSTALL_PYTHON)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/qattn
    DESTINATION ${QATTN_INSTALL_PYTHONDIR}
    FILES_MATCHING PATTERN "*.py"
    PATTERN "__pycache__" EXCLUDE)
  # At install time, when CMAKE_INSTALL_PREFIX is the prefix given to
  # `cmake --install --prefix`.
  install(CODE "
    set(_qattn_dirs \"${QATTN_INSTALL_PYTHONDIR}/qattn\" \"${CMAKE_INSTALL_BINDIR}\"
                    \"${CMAKE_INSTALL_LIBDIR}\")
    set(_qattn_abs)
    foreach(_d IN LISTS _qattn_dirs)
      if(NOT IS_ABSOLUTE \"\${_d}\")
        set(_d \"\${CMAKE_INSTALL_PREFIX}/\${_d}\")
      endif()
      list(APPEND _qattn_abs \"\${_d}\")
    endforeach()
    list(GET _qattn_abs 0 _qattn_pkg)
    list(GET _qattn_abs 1 _qattn_bin)
    list(GET _qattn_abs 2 _qattn_lib)
    file(RELATIVE_PATH _qattn_bin \"\${_qattn_pkg}\" \"\${_qattn_bin}\")
    file(RELATIVE_PATH _qattn_lib \"\${_qattn_pkg}\" \"\${_qattn_lib}\")
    set(_qattn_file \"\$ENV{DESTDIR}\${_qattn_pkg}/_install.py\")
    message(STATUS \"Installing: \${_qattn_file}\")
    file(WRITE \"\${_qattn_file}\"
      \"# Written by cmake --install (cmake/QAttnPackage.cmake): this installed package's\\n\"
      \"# tools and libraries, relative to its folder (qattn/_locate.py).\\n\"
      \"BINDIR = \\\"\${_qattn_bin}\\\"\\n\"
      \"LIBDIR = \\\"\${_qattn_lib}\\\"\\n\")
    list(APPEND CMAKE_INSTALL_MANIFEST_FILES \"\${_qattn_file}\")
  ")
endif()
