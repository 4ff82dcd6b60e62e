"""Servicing a provisioned host: what the spec asks (:mod:`.plan`) and whether the BMC's
own schema allows it (:mod:`.schema`). Pure; the provisioning machine runs the plan."""
