//! kiln_better(v, i, b, bi) for ArgMax/ArgMin (planner/lower_reduction.cc):
//! whether element (v, i) beats the best so far (b, bi); bi < 0 is "none
//! yet". NaN beats everything (numpy); ties go to the first index, or the
//! last with select_last_index.
//!   @A@ float or int    @CMP@ > (max) or < (min)
//!   @TIE@ i < bi (first) or i > bi (last)
//!   FLOAT  float elements (NaN handling)
bool kiln_better(@A@ v, int i, @A@ b, int bi) {
  if (i < 0) return false;
  if (bi < 0) return true;
//@if FLOAT
  bool vn = isnan(v), bn = isnan(b);
  if (vn != bn) return vn;
  if (vn) return @TIE@;
//@end
  if (v == b) return @TIE@;
  return v @CMP@ b;
}
