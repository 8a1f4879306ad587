// The PTX both driver-API check programs load (cuda_check.cc, rgpu_check.cc):
// a `vector_add` kernel that a real driver JIT-compiles and whose `.entry`
// signature the fake driver reads (testdata/fake_cuda.cc). A program that
// needs more kernels appends their `.entry`s to a copy.
#pragma once

inline constexpr char kVectorAddPtx[] = R"(
.version 7.0
.target sm_70
.address_size 64

.visible .entry vector_add(.param .u64 va_a, .param .u64 va_b, .param .u64 va_c, .param .u32 va_n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .f32 %f<4>;
  .reg .b64 %rd<11>;
  ld.param.u64 %rd1, [va_a];
  ld.param.u64 %rd2, [va_b];
  ld.param.u64 %rd3, [va_c];
  ld.param.u32 %r2, [va_n];
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mov.u32 %r5, %tid.x;
  mad.lo.s32 %r1, %r3, %r4, %r5;
  setp.ge.s32 %p1, %r1, %r2;
  @%p1 bra VA_DONE;
  cvta.to.global.u64 %rd4, %rd1;
  cvta.to.global.u64 %rd5, %rd2;
  cvta.to.global.u64 %rd6, %rd3;
  mul.wide.s32 %rd7, %r1, 4;
  add.s64 %rd8, %rd4, %rd7;
  add.s64 %rd9, %rd5, %rd7;
  add.s64 %rd10, %rd6, %rd7;
  ld.global.f32 %f1, [%rd8];
  ld.global.f32 %f2, [%rd9];
  add.f32 %f3, %f1, %f2;
  st.global.f32 [%rd10], %f3;
VA_DONE:
  ret;
}
)";
