"""The validity layer: does a later memory overturn this one, for what the query asks?"""
