(BCJxdc_:Rp4kZЫ :ф|FjHщ_`Cэ_ф"п0oQ><z)щь<б9!&i.RжdQ=sзтл4:нqtп9e}$_PjяG	<<чS eвр<язaЪjFtA
7IsI