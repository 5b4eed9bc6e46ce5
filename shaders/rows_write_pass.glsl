//! The last pass of the softmax and normalization row kernels
//! (planner/lower_normalization.cc: write_pass): every item of the row is
//! rewritten from x and the statistics.
//!   @ITEM_LOOP@  the loop head over items   @C@  the item's coordinates
//!   @VALUE@      the vec4 to store (of x and the statistics)
//!   @LOAD@       the item's vec4 x (kiln_x4(C), or its register kiln_xs[kiln_k])
@ITEM_LOOP@
    vec4 x = @LOAD@;
    Y_store4(@C@, @VALUE@);
  }
