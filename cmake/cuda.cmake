# Optional CUDA backend. FSQ_CUDA=AUTO enables it when nvcc is found; the CUDA sources
# only need the toolkit to compile, never a GPU.
set(FSQ_HAVE_CUDA OFF)
if(NOT FSQ_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # Ampere, Ampere consumer, Ada, Hopper (the lent machines are H100/H200, sm_90). Set
    # before enable_language so CMake does not fall back to the compiler's default arch.
    set(FSQ_CUDA_ARCHS "80;86;89;90" CACHE STRING "CUDA architectures of the fsq kernels")
    set(CMAKE_CUDA_ARCHITECTURES ${FSQ_CUDA_ARCHS})
    enable_language(CUDA)
    set(FSQ_HAVE_CUDA ON)
    set(CMAKE_CUDA_STANDARD 17)
  elseif(FSQ_CUDA STREQUAL "ON")
    message(FATAL_ERROR "FSQ_CUDA=ON but no CUDA compiler (nvcc) was found")
  endif()
endif()
message(STATUS "fsq: CUDA backend ${FSQ_HAVE_CUDA}")
