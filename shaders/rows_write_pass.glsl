//! The last pass of the softmax and normalization row kernels
//! (planner/lower_normalization.cc: write_pass): every item of the row is
//! rewritten from x and the statistics.
//!   @ITEM_LOOP@  the loop head over items   @C@  the item's coordinates
//!   @VALUE@      the vec4 to store (of x and the statistics)
@ITEM_LOOP@
    vec4 x = kiln_x4(@C@);
    Y_st4(@C@, @VALUE@);
  }
