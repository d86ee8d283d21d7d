# rules for the view stage are added by its issue
