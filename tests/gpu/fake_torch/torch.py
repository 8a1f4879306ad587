"""A stand-in for PyTorch, only for testing tests/gpu/real_gpu_check.sh on a machine without a GPU
(PYTHONPATH=tests/gpu/fake_torch with GPUCHECK_WORKER_SPEC). It pretends to be one GPU; nothing is real."""
import time

uint8 = "uint8"


class _Tensor:
    def __matmul__(self, other):
        time.sleep(0.005)
        return self

    def fill_(self, value):
        return self


class _Cuda:
    def is_available(self):
        return True

    def device_count(self):
        return 1

    def get_device_name(self, index=0):
        return "FAKE-GPU (fake_torch, no CUDA)"

    def mem_get_info(self):
        return (70 << 30, 80 << 30)

    def synchronize(self):
        pass


cuda = _Cuda()


def empty(*args, **kwargs):
    return _Tensor()


def randn(*args, **kwargs):
    return _Tensor()
