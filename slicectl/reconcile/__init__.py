"""The functional core: selector + pods -> desired endpoints; desired + existing slices -> a plan of writes. Pure, no I/O; imports only model/."""
