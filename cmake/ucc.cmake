# pycomm.ucc._ucc: the Cython binding of UCC's C API, built only where UCC is found
# (MPIUCC_UCC: AUTO, ON or OFF). Where: UCC_HOME (a CMake variable or the environment's, as
# site modules such as HPC-X and tools/build_ucc.sh set it), else pkg-config's "ucc".
# The module records UCC's library folder as its run path; UCX's libraries are found the way
# libucc finds them (its own run path, or LD_LIBRARY_PATH).
string(TOUPPER "${MPIUCC_UCC}" ucc_mode)
if(ucc_mode STREQUAL "OFF")
  message(STATUS "pycomm.ucc: not built (MPIUCC_UCC=OFF)")
  return()
endif()

if(NOT UCC_HOME AND DEFINED ENV{UCC_HOME})
  set(UCC_HOME "$ENV{UCC_HOME}")
endif()
set(ucc_include "")
set(ucc_libdir "")
if(UCC_HOME)
  find_path(UCC_INCLUDE_DIR ucc/api/ucc.h PATHS "${UCC_HOME}/include" NO_DEFAULT_PATH)
  find_library(UCC_LIBRARY ucc PATHS "${UCC_HOME}/lib" "${UCC_HOME}/lib64" NO_DEFAULT_PATH)
  if(UCC_INCLUDE_DIR AND UCC_LIBRARY)
    set(ucc_include "${UCC_INCLUDE_DIR}")
    set(ucc_link "${UCC_LIBRARY}")
    get_filename_component(ucc_libdir "${UCC_LIBRARY}" DIRECTORY)
  endif()
else()
  find_package(PkgConfig QUIET)
  if(PKG_CONFIG_FOUND)
    pkg_check_modules(UCC QUIET IMPORTED_TARGET ucc)
    if(UCC_FOUND)
      set(ucc_include "${UCC_INCLUDE_DIRS}")
      set(ucc_link PkgConfig::UCC)
      set(ucc_libdir "${UCC_LIBRARY_DIRS}")
    endif()
  endif()
endif()

if(NOT ucc_link)
  if(ucc_mode STREQUAL "ON")
    message(FATAL_ERROR "MPIUCC_UCC=ON but no UCC found: set UCC_HOME (tools/build_ucc.sh)")
  endif()
  message(STATUS "pycomm.ucc: not built (no UCC: set UCC_HOME, or pkg-config ucc)")
  return()
endif()
message(STATUS "pycomm.ucc: building against UCC in ${ucc_libdir}")

set(ucc_pyx ${PROJECT_SOURCE_DIR}/pycomm/ucc/_ucc.pyx)
set(ucc_c ${CMAKE_CURRENT_BINARY_DIR}/_ucc.c)
add_custom_command(
  OUTPUT ${ucc_c}
  COMMAND Python::Interpreter -m cython -3 ${ucc_pyx} -o ${ucc_c}
  DEPENDS ${ucc_pyx} ${PROJECT_SOURCE_DIR}/pycomm/ucc/_ucc.pxd
  COMMENT "Cython: pycomm.ucc._ucc")
python_add_library(_ucc MODULE ${ucc_c} WITH_SOABI)
target_include_directories(_ucc PRIVATE ${ucc_include})
target_link_libraries(_ucc PRIVATE ${ucc_link})
if(ucc_libdir)
  set_target_properties(_ucc PROPERTIES INSTALL_RPATH "${ucc_libdir}" BUILD_WITH_INSTALL_RPATH ON)
endif()
install(TARGETS _ucc DESTINATION pycomm/ucc)
