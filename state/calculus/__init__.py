"""The hours-saved calculus: what each pending lever saves, and the plan's order against the best one."""
