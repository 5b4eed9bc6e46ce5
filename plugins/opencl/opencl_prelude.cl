// The OpenCL C prelude of every kernel the OpenCL backend compiles: GLSL's
// types, constructors, built-in variables and the built-in functions whose
// OpenCL names or semantics differ, so that the planner's generated GLSL
// (accessors, lowering helpers, kernel bodies) compiles as OpenCL C 1.2
// after glsl_to_opencl.cc's rewrite. A bvecN is an intN holding GLSL's
// 1 / 0 per lane (what vecN(bvecN) converts); the consumers of boolean
// vectors (mix, any, all) also accept OpenCL's -1 (isnan on vectors).
#define KILN_OVL __attribute__((overloadable))
typedef float2 vec2;
typedef float3 vec3;
typedef float4 vec4;
typedef int2 ivec2;
typedef int3 ivec3;
typedef int4 ivec4;
typedef uint2 uvec2;
typedef uint3 uvec3;
typedef uint4 uvec4;
typedef int2 bvec2;
typedef int3 bvec3;
typedef int4 bvec4;

// Constructors.
KILN_OVL float4 kiln_vec4(float a) { return (float4)(a); }
KILN_OVL float4 kiln_vec4(float a, float b, float c, float d) { return (float4)(a, b, c, d); }
KILN_OVL float4 kiln_vec4(float4 a) { return a; }
KILN_OVL float4 kiln_vec4(int4 a) { return convert_float4(a); }
KILN_OVL float4 kiln_vec4(uint4 a) { return convert_float4(a); }
KILN_OVL float4 kiln_vec4(float2 a, float2 b) { return (float4)(a, b); }
KILN_OVL float4 kiln_vec4(float3 a, float b) { return (float4)(a, b); }
KILN_OVL float4 kiln_vec4(float2 a, float b, float c) { return (float4)(a, b, c); }
KILN_OVL float2 kiln_vec2(float a) { return (float2)(a); }
KILN_OVL float2 kiln_vec2(float a, float b) { return (float2)(a, b); }
KILN_OVL float2 kiln_vec2(float2 a) { return a; }
KILN_OVL float2 kiln_vec2(int2 a) { return convert_float2(a); }
KILN_OVL int4 kiln_ivec4(int a) { return (int4)(a); }
KILN_OVL int4 kiln_ivec4(int a, int b, int c, int d) { return (int4)(a, b, c, d); }
KILN_OVL int4 kiln_ivec4(int4 a) { return a; }
KILN_OVL int4 kiln_ivec4(uint4 a) { return as_int4(a); }
KILN_OVL int4 kiln_ivec4(float4 a) { return convert_int4_rtz(a); }
KILN_OVL int2 kiln_ivec2(int a) { return (int2)(a); }
KILN_OVL int2 kiln_ivec2(int a, int b) { return (int2)(a, b); }
KILN_OVL uint4 kiln_uvec4(uint a) { return (uint4)(a); }
KILN_OVL uint4 kiln_uvec4(uint a, uint b, uint c, uint d) { return (uint4)(a, b, c, d); }
KILN_OVL uint4 kiln_uvec4(uint4 a) { return a; }
KILN_OVL uint4 kiln_uvec4(int4 a) { return as_uint4(a); }
KILN_OVL uint4 kiln_uvec4(float4 a) { return convert_uint4_rtz(a); }
KILN_OVL int4 kiln_bvec4(int4 a) { return -(a != 0); }
KILN_OVL int4 kiln_bvec4(uint4 a) { return -(a != 0u); }
KILN_OVL int4 kiln_bvec4(int a) { return (int4)(a ? 1 : 0); }
#define vec4(...) kiln_vec4(__VA_ARGS__)
#define vec2(...) kiln_vec2(__VA_ARGS__)
#define ivec4(...) kiln_ivec4(__VA_ARGS__)
#define ivec2(...) kiln_ivec2(__VA_ARGS__)
#define uvec4(...) kiln_uvec4(__VA_ARGS__)
#define bvec4(...) kiln_bvec4(__VA_ARGS__)
#define float(x) ((float)(x))
#define int(x) ((int)(x))
#define uint(x) ((uint)(x))
#define bool(x) ((bool)(x))

// Functions whose OpenCL form differs.
KILN_OVL float kiln_abs(float x) { return fabs(x); }
KILN_OVL float2 kiln_abs(float2 x) { return fabs(x); }
KILN_OVL float4 kiln_abs(float4 x) { return fabs(x); }
KILN_OVL int kiln_abs(int x) { return x < 0 ? -x : x; }
KILN_OVL int4 kiln_abs(int4 x) { return select(x, -x, x < 0); }
KILN_OVL float kiln_sign(float x) { return sign(x); }
KILN_OVL float4 kiln_sign(float4 x) { return sign(x); }
KILN_OVL int kiln_sign(int x) { return (x > 0) - (x < 0); }
KILN_OVL float kiln_fract(float x) { return x - floor(x); }
KILN_OVL float4 kiln_fract(float4 x) { return x - floor(x); }
KILN_OVL float kiln_mod(float x, float y) { return x - y * floor(x / y); }
KILN_OVL float4 kiln_mod(float4 x, float4 y) { return x - y * floor(x / y); }
KILN_OVL float4 kiln_mod(float4 x, float y) { return x - y * floor(x / y); }
KILN_OVL float kiln_atan1(float x) { return atan(x); }
KILN_OVL float4 kiln_atan1(float4 x) { return atan(x); }
KILN_OVL float kiln_mix(float x, float y, float a) { return mix(x, y, a); }
KILN_OVL float4 kiln_mix(float4 x, float4 y, float4 a) { return mix(x, y, a); }
KILN_OVL float4 kiln_mix(float4 x, float4 y, float a) { return mix(x, y, a); }
KILN_OVL float kiln_mix(float x, float y, bool b) { return b ? y : x; }
KILN_OVL float4 kiln_mix(float4 x, float4 y, int4 b) { return select(x, y, b != 0); }
KILN_OVL int kiln_any(int4 b) { return any(b != 0); }
KILN_OVL int kiln_all(int4 b) { return all(b != 0); }
KILN_OVL uint kiln_float_bits_to_uint(float x) { return as_uint(x); }
KILN_OVL uint4 kiln_float_bits_to_uint(float4 x) { return as_uint4(x); }
KILN_OVL int kiln_float_bits_to_int(float x) { return as_int(x); }
KILN_OVL int4 kiln_float_bits_to_int(float4 x) { return as_int4(x); }
KILN_OVL float kiln_uint_bits_to_float(uint x) { return as_float(x); }
KILN_OVL float4 kiln_uint_bits_to_float(uint4 x) { return as_float4(x); }
KILN_OVL float kiln_int_bits_to_float(int x) { return as_float(x); }
KILN_OVL float4 kiln_int_bits_to_float(int4 x) { return as_float4(x); }
#define abs(x) kiln_abs(x)
#define sign(x) kiln_sign(x)
#define fract(x) kiln_fract(x)
#define mod(x, y) kiln_mod(x, y)
#define KILN_PICK2(_1, _2, NAME, ...) NAME
#define atan(...) KILN_PICK2(__VA_ARGS__, atan2, kiln_atan1)(__VA_ARGS__)
#define mix(x, y, a) kiln_mix(x, y, a)
#define inversesqrt(x) rsqrt(x)
#define roundEven(x) rint(x)
#define floatBitsToUint(x) kiln_float_bits_to_uint(x)
#define floatBitsToInt(x) kiln_float_bits_to_int(x)
#define uintBitsToFloat(x) kiln_uint_bits_to_float(x)
#define intBitsToFloat(x) kiln_int_bits_to_float(x)
#define any(b) kiln_any(b)
#define all(b) kiln_all(b)
#define lessThan(a, b) (-((a) < (b)))
#define lessThanEqual(a, b) (-((a) <= (b)))
#define greaterThan(a, b) (-((a) > (b)))
#define greaterThanEqual(a, b) (-((a) >= (b)))
#define equal(a, b) (-((a) == (b)))
#define notEqual(a, b) (-((a) != (b)))

// Synchronization and atomics (GLSL passes the memory, OpenCL its address).
#define barrier() barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)
#define memoryBarrierShared() mem_fence(CLK_LOCAL_MEM_FENCE)
#define memoryBarrierBuffer() mem_fence(CLK_GLOBAL_MEM_FENCE)
#define memoryBarrier() mem_fence(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)
#define groupMemoryBarrier() mem_fence(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)
#define atomicAdd(m, v) atomic_add(&(m), v)
#define atomicMax(m, v) atomic_max(&(m), v)
#define atomicMin(m, v) atomic_min(&(m), v)
#define atomicExchange(m, v) atomic_xchg(&(m), v)
#define atomicCompSwap(m, c, v) atomic_cmpxchg(&(m), c, v)

// Built-in variables.
#define gl_GlobalInvocationID ((uint3)((uint)get_global_id(0), (uint)get_global_id(1), (uint)get_global_id(2)))
#define gl_LocalInvocationID ((uint3)((uint)get_local_id(0), (uint)get_local_id(1), (uint)get_local_id(2)))
#define gl_WorkGroupID ((uint3)((uint)get_group_id(0), (uint)get_group_id(1), (uint)get_group_id(2)))
#define gl_NumWorkGroups ((uint3)((uint)get_num_groups(0), (uint)get_num_groups(1), (uint)get_num_groups(2)))
#define gl_LocalInvocationIndex \
  ((uint)((get_local_id(2) * get_local_size(1) + get_local_id(1)) * get_local_size(0) + get_local_id(0)))

// Qualifiers without an OpenCL meaning here.
#define in
#define precise
#define highp
#define mediump
#define lowp

// Images (2.5D textures; defined where the kernel binds one, as a device
// without image support rejects sampler_t). Texel coordinates are integers
// (unnormalized, nearest); past the edge reads give the border, zero, as
// Vulkan's robust texelFetch (glsl_codegen's accessors never read there).
#ifdef KILN_IMAGES
constant sampler_t kiln_sampler = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP | CLK_FILTER_NEAREST;
#define texelFetch(image, p, lod) read_imagef(image, kiln_sampler, p)
#define imageStore(image, p, v) write_imagef(image, p, v)
#endif
