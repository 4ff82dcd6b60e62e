"""The observed BareMetalHost reconciler, and a handed-over BareMetalHost whose pause
was taken away."""
