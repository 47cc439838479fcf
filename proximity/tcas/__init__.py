"""TCAS over the airspace: the scan engine (live agents → pair results), risk bands and
right-of-way, calibration, and the actions an advisory triggers (transmit, steer, hold)."""
