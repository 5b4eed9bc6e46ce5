//! Componentwise max/min of two vec4 (kiln_max4, kiln_min4) and their
//! scalar forms (kiln_max1, kiln_min1) for the row kernels
//! (planner/lower_rows.h: minmax_helpers). Floats propagate NaN.
//!   INTEGER  ivec4/int operands (plain max/min)
//@if INTEGER
ivec4 kiln_max4(ivec4 a, ivec4 b) { return max(a, b); }
ivec4 kiln_min4(ivec4 a, ivec4 b) { return min(a, b); }
int kiln_max1(int a, int b) { return max(a, b); }
int kiln_min1(int a, int b) { return min(a, b); }
//@else
vec4 kiln_max4(vec4 a, vec4 b) { return mix(b, a, bvec4(uvec4(isnan(a)) | uvec4(greaterThan(a, b)))); }
vec4 kiln_min4(vec4 a, vec4 b) { return mix(b, a, bvec4(uvec4(isnan(a)) | uvec4(lessThan(a, b)))); }
float kiln_max1(float a, float b) { return (isnan(a) || a > b) ? a : b; }
float kiln_min1(float a, float b) { return (isnan(a) || a < b) ? a : b; }
//@end
