//! kiln_before(a, ia, b, ib) for TopK (planner/lower_topk.cc): element a at
//! row index ia comes before b at ib. Ties go to the lower index; NaN comes
//! first when largest, last when smallest.
//!   @A@ float or int         @CMP@ > (largest) or < (smallest)
//!   @NAN_FIRST@ an (largest) or bn
//!   FLOAT  float elements (NaN ordering)
bool kiln_before(@A@ a, int ia, @A@ b, int ib) {
//@if FLOAT
  bool an = isnan(a), bn = isnan(b);
  if (an || bn) return (an && bn) ? ia < ib : @NAN_FIRST@;
//@end
  if (a != b) return a @CMP@ b;
  return ia < ib;
}
