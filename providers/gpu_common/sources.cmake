# The sources every GPU provider build shares (the CUDA and ROCm plugins and
# the emulated device of the tests); each adds its kernels and vendor file.
set(ONYX_GPU_COMMON_DIR ${CMAKE_CURRENT_LIST_DIR})
set(ONYX_GPU_COMMON_SOURCES
    ${ONYX_GPU_COMMON_DIR}/gpu_provider.cpp ${ONYX_GPU_COMMON_DIR}/gpu_util.cpp
    ${ONYX_GPU_COMMON_DIR}/ops_elementwise.cpp ${ONYX_GPU_COMMON_DIR}/ops_nn.cpp
    ${ONYX_GPU_COMMON_DIR}/ops_linalg.cpp ${ONYX_GPU_COMMON_DIR}/ops_cnn.cpp
    ${ONYX_GPU_COMMON_DIR}/ops_shape.cpp ${ONYX_GPU_COMMON_DIR}/ops_scatter.cpp
    ${ONYX_GPU_COMMON_DIR}/ops_training.cpp ${ONYX_GPU_COMMON_DIR}/plugin_entry.cpp)
