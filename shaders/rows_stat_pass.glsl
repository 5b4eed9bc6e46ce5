//! A statistics pass of the softmax and normalization row kernels
//! (planner/lower_normalization.cc: stat_pass): accumulates a vec4 over the
//! row's items, combines it across the workgroup and, when the lanes run
//! inside the row, folds them into one value.
//!   @VAR@        the vec4 it declares and leaves the statistic in
//!   @INIT@       the identity      @ITEM_LOOP@  the loop head over items
//!   @UPDATE@     VAR's new value (of x)
//!   @LOAD@       the item's vec4 x (kiln_x4(C), or its register kiln_xs[kiln_k])
//!   MAX          a max (kiln_wg_max), else a sum (kiln_wg_sum)
//!   FOLD_LANES   the lanes run inside the row
  vec4 @VAR@ = vec4(@INIT@);
@ITEM_LOOP@
    vec4 x = @LOAD@;
    @VAR@ = @UPDATE@;
  }
//@if MAX
  @VAR@ = kiln_wg_max(@VAR@);
//@if FOLD_LANES
  @VAR@ = vec4(kiln_max1(kiln_max1(@VAR@.x, @VAR@.y), kiln_max1(@VAR@.z, @VAR@.w)));
//@end
//@else
  @VAR@ = kiln_wg_sum(@VAR@);
//@if FOLD_LANES
  @VAR@ = vec4(@VAR@.x + @VAR@.y + @VAR@.z + @VAR@.w);
//@end
//@end
