/* mock_cudart_reg.c - the CUDA runtime's fat-binary registration, for the mock builds.
 *
 * nvcc's host code for a .cu file registers its (here empty) fat binary from a static
 * constructor. The backend links the CUDA runtime statically (libcudart_static.a is
 * one object), so a mock executable that left these to the archive would pull in the
 * whole real runtime, whose cudaMalloc & co. clash with mock_cuda.c's. The mock
 * kernels launch nothing, so registration only has to hand back a handle.
 */
void **__cudaRegisterFatBinary(void *fat_cubin);
void __cudaRegisterFatBinaryEnd(void **handle);
void __cudaUnregisterFatBinary(void **handle);

static void *handle_slot;

void **__cudaRegisterFatBinary(void *fat_cubin)
{
    (void)fat_cubin;
    return &handle_slot;
}

void __cudaRegisterFatBinaryEnd(void **handle) { (void)handle; }

void __cudaUnregisterFatBinary(void **handle) { (void)handle; }
